"""libcst transformers, one fix per module. Each is a `VisitorBasedCodemodCommand`, so
`python -m libcst.tool codemod` can run it on its own (it then finds its targets itself)."""
