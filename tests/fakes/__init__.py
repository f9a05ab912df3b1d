"""Local fake forges (GitHub, GitLab) over real HTTP, answering with the official shapes in tests/data/forge-api."""
