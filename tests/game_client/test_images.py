"""Frames as pictures for vision models: the PNG drawn from a frame (read back with
Pillow, an independent decoder), and ``gridstudy agent run --observation`` sending it as
an image_url data URL that the stand-in receives, with the prompt saying what it shows."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image
from sqlmodel import select

from bench.standin import FakeOpenAI
from game_client.bridge import images
from records.models import Frame
from records.store import Store
from tasks import colours
from tests.game_client.test_agent_run import SOLVE, agent_run, rows


def picture(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.mode == "RGB"
    return image


def cell_centre(image: Image.Image, x: int, y: int) -> tuple[int, int, int]:
    step = images.CELL + 1
    return image.getpixel((x * step + 1 + images.CELL // 2, y * step + 1 + images.CELL // 2))


def test_a_frame_is_drawn_cell_by_cell_in_the_browsers_colours():
    frame = [["black", "gold", "#123456"], ["mask", "no-such-colour", "LimeGreen"]]
    image = picture(images.frame_png(frame))
    step = images.CELL + 1
    assert image.size == (3 * step + 1, 2 * step + 1)
    assert cell_centre(image, 0, 0) == (0, 0, 0)
    assert cell_centre(image, 1, 0) == colours.rgb("gold") == (255, 215, 0)
    assert cell_centre(image, 2, 0) == (0x12, 0x34, 0x56)
    assert cell_centre(image, 1, 1) == images.UNKNOWN
    assert cell_centre(image, 2, 1) == (50, 205, 50)
    masked = {image.getpixel((1 + dx, step + 1 + dy)) for dx in range(8) for dy in range(8)}
    assert masked == set(images.MASK)  # a checkerboard of two greys
    assert image.getpixel((0, 0)) == images.LINE and image.getpixel((step, 5)) == images.LINE
    assert images.data_url(frame).startswith("data:image/png;base64,iVBOR")


def last_user_content(body):
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def decoded(part) -> Image.Image:
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    return picture(base64.b64decode(url.split(",", 1)[1]))


@pytest.mark.parametrize("observation", ["image", "both"])
def test_a_vision_run_sends_each_frame_as_a_png_the_stand_in_can_read(observation, tmp_path,
                                                                       registered):
    db = tmp_path / "r.db"
    with FakeOpenAI(SOLVE) as fake:
        result = agent_run(db, "--model", "vision-m", "--observation", observation,
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.stderr
    runs, episodes, events = rows(db)
    assert runs[0].config["observation"] == observation
    assert episodes[0].score == 1.0
    frames = {}
    with Store(str(db)) as store, store.session() as session:
        for row in session.exec(select(Frame)).all():
            frames[row.hash] = json.loads(row.data)
    for turn, body in enumerate(fake.requests):
        text, image = last_user_content(body)
        assert text["type"] == "text" and image["type"] == "image_url"
        assert images.IMAGE_NOTE.split("{")[0] in text["text"]
        if turn == 0:  # before the test adds its goal grid: the frame's text grid or not
            assert ("[[" in text["text"]) == (observation == "both")
        # the picture shows the frame the turn showed: the one after the previous action
        frame = frames[events[turn - 1].frame_hash] if turn else None
        if frame is not None:
            shown = decoded(image)
            for y, row in enumerate(frame):
                for x, name in enumerate(row):
                    assert cell_centre(shown, x, y) == colours.rgb(name), (turn, x, y)
        # earlier turns keep their pictures
        assert sum(1 for m in body["messages"] if isinstance(m["content"], list)) == turn + 1
    assert events[0].prompt == last_user_content(fake.requests[0])[0]["text"]


def test_text_observation_sends_no_picture(tmp_path, registered):
    with FakeOpenAI(SOLVE) as fake:
        result = agent_run(tmp_path / "r.db", "--model", "m",
                           env={"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.stderr
    assert all(isinstance(m["content"], str) for b in fake.requests for m in b["messages"])
    runs, _, _ = rows(tmp_path / "r.db")
    assert runs[0].config["observation"] == "text"
