"""Analysis of one family each (its tables, figures and report section); the shared pieces sit above."""
