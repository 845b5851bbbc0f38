"""Procedural task generators with length modes, and a name -> task registry.

What goes here: ``get_task(name, **options)`` and tasks whose
``sample(rng, batch_size, length)`` returns a padded NumPy ``Batch``.
"""
