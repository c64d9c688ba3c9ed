"""ROC0xx: findings about the tool itself (files it cannot read, fixes it could not apply).

These rules never visit a tree; the engine reports them. They live here so that their
documentation comes from the same place as every other rule's.
"""
