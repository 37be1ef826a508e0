"""A provider-neutral chat-and-tools engine. Imports nothing from the domain."""
