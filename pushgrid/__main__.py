from .cli.launcher import main

main()
