from pglimits_core.cli import main

main()
