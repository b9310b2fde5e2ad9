"""amp-clipfix: find and fix gradient clipping on fused optimizers under mixed precision in
PyTorch Lightning code. It reads code with libcst; it never imports torch or Lightning."""

__version__ = "0.11.0"
