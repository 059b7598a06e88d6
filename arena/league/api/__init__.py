"""The league over HTTP: the API's routes, the fleet workers' routes, the gate and connection caps.

The top of the league: nothing in it imports this package (the web and the CLI do).
"""
