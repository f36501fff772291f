"""The boundary where a user's text becomes a value: link (query-parameter) values, prompts, bounded numbers; one message each."""
