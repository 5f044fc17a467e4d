from toolsift.console import main

main()
