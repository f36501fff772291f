"""Loading a model: the bundled ones, the local Hugging Face cache, folders, random shapes; what a load costs; shared-mode policy."""
