"""The web page: its HTTP API and WebSockets through aiohttp, and the page in headless Chromium."""
