"""Accounts: users, their roles and tokens; fleet workers and their tokens; daily submissions.

The bottom domain of the league: it imports only the database (``arena.league._db``).
"""
