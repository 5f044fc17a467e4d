from toolsift.cli import main

main()
