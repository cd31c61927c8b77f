"""A real data-browsing application for scripts/agent_bench.py's data task: SQLAdmin over a library's catalogue.

Nobody here wrote it: SQLAdmin (a Starlette admin for SQLAlchemy models) comes from PyPI with
uvicorn, installed by this module into a folder of its own (never into the project's
environment), and serves a SQLite catalogue of authors and their books seeded with known
values: tables with a count, sortable columns, paging, filters by genre and by author, a search,
and each book's author a related row one link away. The task's answers are checked against that
database, read with sqlite3 outside both MCP servers.

    site = DataSite.build(folder)       # install, seed a template database (once)
    with site.serve() as (base, db): …  # a fresh copy of the database, on a free port
"""

import os
import subprocess
import sys

from admin_site import serving

SQLADMIN = ("sqladmin==0.32.0", "uvicorn==0.55.0", "sqlalchemy==2.1.9")  # the task is written for these pages
GENRES = ("Novel", "Poetry", "Essay", "Drama", "Memoir")
COUNTRIES = ("Chile", "Nigeria", "Japan", "Poland", "Canada", "India")
AUTHORS = 18
BOOKS = 137

# The application: two models, a view each (the list's columns, sorting, search and filters), on
# the database named by BENCH_DB. Written into the folder and run by uvicorn.
APP = '''
import os
from sqlalchemy import ForeignKey, Integer, String, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from starlette.applications import Starlette
from sqladmin import Admin, ModelView
from sqladmin.filters import AllUniqueStringValuesFilter, ForeignKeyFilter


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    country: Mapped[str] = mapped_column(String(40))
    born: Mapped[int] = mapped_column(Integer)
    books = relationship("Book", back_populates="author")

    def __str__(self):
        return self.name


class Book(Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(120))
    year: Mapped[int] = mapped_column(Integer)
    genre: Mapped[str] = mapped_column(String(20))
    pages: Mapped[int] = mapped_column(Integer)
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    author = relationship("Author", back_populates="books")

    def __str__(self):
        return self.title


engine = create_engine("sqlite:///" + os.environ["BENCH_DB"])
app = Starlette()
admin = Admin(app, engine, title="Catalogue")


class AuthorAdmin(ModelView, model=Author):
    column_list = [Author.id, Author.name, Author.country, Author.born]
    column_sortable_list = [Author.name, Author.born]
    column_searchable_list = [Author.name]
    page_size = 20


class BookAdmin(ModelView, model=Book):
    column_list = [Book.id, Book.title, Book.year, Book.genre, Book.pages, Book.author]
    column_sortable_list = [Book.title, Book.year, Book.pages]
    column_searchable_list = [Book.title]
    column_filters = [AllUniqueStringValuesFilter(Book.genre), ForeignKeyFilter(Book.author_id, Author.name)]
    page_size = 20


admin.add_view(AuthorAdmin)
admin.add_view(BookAdmin)
'''

SEED = f'''
import os, random, sys
sys.path.insert(0, os.environ["BENCH_APP"])
from catalogue import Author, Base, Book, engine
from sqlalchemy.orm import Session
Base.metadata.create_all(engine)
rng = random.Random(74)
words = ("Moon", "River", "Salt", "Glass", "Winter", "Orchard", "Harbour", "Lantern", "Ash", "Copper",
         "Silence", "Meridian", "Paper", "Thread", "Stone", "Feather", "Ember", "Tide", "Atlas", "Bell")
with Session(engine) as db:
    authors = [Author(name=f"Author {{i:02d}} " + rng.choice(("Okafor", "Tanaka", "Nowak", "Singh", "Leblanc",
                                                                "Rojas")), country=rng.choice({COUNTRIES!r}),
                      born=rng.randint(1920, 1990)) for i in range(1, {AUTHORS} + 1)]
    db.add_all(authors)
    titles = {{}}  # a dict keeps the order the titles came in (a set's depends on the hash seed)
    while len(titles) < {BOOKS}:
        titles[f"The {{rng.choice(words)}} of {{rng.choice(words)}}" if rng.random() < 0.5
               else f"{{rng.choice(words)}} and {{rng.choice(words)}}"] = None
    for title in titles:
        db.add(Book(title=title, year=rng.randint(1950, 2024), genre=rng.choice({GENRES!r}),
                    pages=rng.randint(90, 700), author=rng.choice(authors)))
    db.commit()
'''


class DataSite:
    def __init__(self, folder):
        self.folder = folder
        self.lib = os.path.join(folder, "lib")
        self.app = os.path.join(folder, "app")
        self.template = os.path.join(folder, "template.db")

    @classmethod
    def build(cls, folder):
        """Install SQLAdmin into `folder`, write the application and seed a template database."""
        site = cls(folder)
        if not os.path.exists(os.path.join(site.lib, "sqladmin")):
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--target", site.lib, *SQLADMIN], check=True, stdout=subprocess.DEVNULL)
        os.makedirs(site.app, exist_ok=True)
        with open(os.path.join(site.app, "catalogue.py"), "w") as f:
            f.write(APP)
        if os.path.exists(site.template):
            os.unlink(site.template)
        subprocess.run([sys.executable, "-c", SEED], env=site._env(site.template), check=True)
        return site

    def _env(self, db):
        return {**os.environ, "PYTHONPATH": os.pathsep.join([self.lib, self.app]), "BENCH_DB": db,
                "BENCH_APP": self.app}

    def serve(self):
        """A fresh copy of the seeded database behind uvicorn: yields (base URL, db path)."""
        return serving(self.folder, self.template, "/admin/", "SQLAdmin (uvicorn)", 30, lambda port, db: (
            [sys.executable, "-m", "uvicorn", "catalogue:app", "--host", "127.0.0.1", "--port", str(port),
             "--log-level", "warning"], self._env(db)))
