"""Sans-I/O protocol: subjects, frames, codec and errors. No sockets, no asyncio here."""
