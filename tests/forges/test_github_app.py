"""GitHub App installation auth: a JWT signed with the App's key buys an installation token from the fake."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github_fake import GitHubFake
from tests.forges.conftest import TEST_POLICY, Remote
from writeback.adapters.forges import github
from writeback.adapters.forges.github_api import github_forge
from writeback.errors import ForgeError
from writeback.model import PullRequestSpec


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@pytest.fixture
def app_fake(remote: Remote, app_key: tuple[str, str]) -> Iterator[GitHubFake]:
    fake = GitHubFake(bare=remote.bare, tokens=(), app_id=321, app_public_key=app_key[1], installation_id=4242)
    fake.start()
    try:
        yield fake
        assert fake.violations == []
    finally:
        fake.stop()


@pytest.mark.parametrize("installation_id", [4242, None])
def test_app_installation_token_is_used_for_the_api_and_for_git(
    app_fake: GitHubFake, app_key: tuple[str, str], installation_id: int | None
) -> None:
    forge = github_forge(
        kind=github.KIND,
        project="octo-org/gitops", base_url=app_fake.url, app_id=321, private_key=app_key[0],
        installation_id=installation_id, policy=TEST_POLICY,
    )  # fmt: skip
    assert forge.find_open_pr(branch="writeback/prod/x") is None
    assert app_fake.installation_tokens == ["ghs_installation_1"]
    pulls = [r for r in app_fake.requests if r.path.endswith("/pulls")]
    assert pulls and all(r.headers["Authorization"] == "token ghs_installation_1" for r in pulls)
    assert forge.git_token() == "ghs_installation_1"


def test_a_wrong_app_key_is_a_forge_error(app_fake: GitHubFake) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    forge = github_forge(kind=github.KIND, project="octo-org/gitops", base_url=app_fake.url, app_id=321,
                         private_key=pem, installation_id=4242, policy=TEST_POLICY)  # fmt: skip
    spec = PullRequestSpec(branch="b", base="main", title="t", body="b", fingerprint="1", changeset_id="c")
    with pytest.raises(ForgeError, match="401"):
        forge.create_pr(spec=spec)
