"""One module per migration, named by date (``alembic.ini``'s ``file_template``)."""
