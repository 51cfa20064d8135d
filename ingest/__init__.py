"""The tracescore service: receive, decode, store, assemble and transform spans; serve and command line."""
