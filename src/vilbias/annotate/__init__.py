"""LLM-as-annotator: prompts, backends, hierarchical voting and the call store."""
