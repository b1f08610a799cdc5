"""The embedded sample: a small annotated workdir written for this project (see its README.md)."""
