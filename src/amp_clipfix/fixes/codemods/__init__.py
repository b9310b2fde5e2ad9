"""libcst transformers, one fix per module (`SiteFix`, run by the pipeline without
`libcst.codemod`); `commands.py` makes each a `VisitorBasedCodemodCommand`, so
`python -m libcst.tool codemod commands.UnfuseCommand` can run it on its own (it then finds its
targets itself)."""
