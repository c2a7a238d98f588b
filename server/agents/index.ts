// Each endpoint module registers its paths with agentRoutes() when imported.
