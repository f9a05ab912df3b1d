"""Local fake forges (GitHub, GitLab) over real HTTP, answering with the official shapes in ../shared/forge-api."""
