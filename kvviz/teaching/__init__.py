"""The guided lesson and what a teacher needs around it: the twelve steps, their grading and score, the handout, the
glossary, the teacher's guide."""

# How many steps lesson.STEPS holds, for a page that names the count without importing the lesson's steps
# (the home page). tests/test_glossary_teachers.py holds the two equal.
LESSON_STEPS = 12
