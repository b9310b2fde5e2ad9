"""An example rule for CONTRIBUTING.md "Adding a rule": registered by its test, never shipped."""
