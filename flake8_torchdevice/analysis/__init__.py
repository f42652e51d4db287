"""Shared analysis every rule calls: names live in ``..names``; guards, the
torch vocabulary, argument lookup and function inputs here, one home each."""
