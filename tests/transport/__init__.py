"""Where runs go: the local transport, Redis (store, intents, takeover), worker fleets."""
