"""Placeholder CLI."""


def main() -> int:
    return 0
