"""`make demo` launches a real study: the demo study is stored and an admin can log in."""

from __future__ import annotations

from sqlmodel import select

from records.models import Study
from records.store import Store
from study_server import auth, tokens
from study_server.commands.serve import DEMO_STUDY, prepare_demo


def test_prepare_demo_stores_the_study_and_a_working_login(tmp_path):
    url = str(tmp_path / "demo.db")
    first, first_token = prepare_demo(url, DEMO_STUDY)
    second, second_token = prepare_demo(url, DEMO_STUDY)  # a restart replaces, never fails
    with Store(url) as store:
        with store.session() as db:
            studies = db.exec(select(Study)).all()
        assert [s.id for s in studies] == ["demo"]
        assert studies[0].definition["problems"]
        assert auth.verify(store.engine, "demo", second)
        assert not auth.verify(store.engine, "demo", first)
        assert tokens.holder(store.engine, second_token) is not None
        assert tokens.holder(store.engine, first_token) is None
