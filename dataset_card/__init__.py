"""Dataset card template and its static sections (rendered by ``vilbias build``)."""
