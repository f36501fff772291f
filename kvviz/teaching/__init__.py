"""The guided lesson and what a teacher needs around it: the twelve steps, the handout, the glossary, the teacher's guide."""
