"""The BiasCorpus dataset builder (features, configs, split generation)."""
