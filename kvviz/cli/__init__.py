"""`python -m kvviz <command>`: one module per subcommand."""
