"""Code that runs in child processes, never imported by the server itself.

`launch_server.js` runs on Playwright's Node.js and serves the shared browser;
`pipe_relay.py` runs once per session in the Playwright driver's place.
"""
