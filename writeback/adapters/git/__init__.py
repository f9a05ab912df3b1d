"""The Git edge (real git): the bot's clone and branches, revisions, and a working tree's texts."""
