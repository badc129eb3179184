"""Server-side frame encoding: each outgoing frame encoded once and shared by every subscriber."""
