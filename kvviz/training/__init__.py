"""Training the bundled models: the script, its recipes, the copying data that grows induction heads."""
