"""Bots and their versions: submitting one, its upload unpacked as hostile input, its steps.

Above the accounts and the league home; below the matches, which it never imports.
"""
