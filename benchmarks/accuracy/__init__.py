"""The accuracy suite: the library's models trained under the papers' protocols, scored beside the published tables."""
