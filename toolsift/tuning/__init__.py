"""Fine-tuning the catalog's embedder on the requests it has seen (``toolsift tune``)."""
