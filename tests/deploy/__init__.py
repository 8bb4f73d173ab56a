"""Deployment checks that need no cluster and no Docker engine: the Helm chart, docker-compose.yml, images."""
