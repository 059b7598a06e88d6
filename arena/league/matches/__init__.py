"""Matches: the queue and its leases, the scheduler, results and ratings, referee, suspensions.

Above the bots (a match seats their versions).
"""
