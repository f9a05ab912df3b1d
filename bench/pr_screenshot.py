"""Take a screenshot of a pull request body as a reviewer sees it on GitHub: rendered by GitHub's Markdown library
(cmark-gfm, PyPI ``cmarkgfm``), styled with GitHub's stylesheet (npm ``github-markdown-css``), in headless Chromium
at 1,000 px. A script for a person to look at the result, not a test (issue 19, section 5).

    bench/pr_screenshot.py -o /tmp/pr.png                      # the demo's PR body (writeback plan on examples/)
    bench/pr_screenshot.py --body pr.md --width 1280 -o pr.png  # any body

Needs: Chromium (Debian: ``apt-get install chromium``) and github-markdown-css (``npm install
github-markdown-css`` into ``--css-dir``, default ``~/.cache/writeback/pr-screenshot``, done by this script when
npm is there). The HTML it screenshots is kept beside the PNG (``.html``).
"""

from __future__ import annotations

import argparse
import html
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSS_DIR = Path.home() / ".cache" / "writeback" / "pr-screenshot"
DEMO = ["--live", "examples/hotfix/live.yaml", "--repo", ".", "--path", "examples/hotfix/gitops"]


def demo_body() -> str:
    """The body ``writeback run`` would open for the demo (the 3 AM hotfix): the first change set's."""
    done = subprocess.run([sys.executable, "-m", "writeback.cli", "plan", *DEMO, "-o", "json"], cwd=ROOT,
                          capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
    bodies = [cs["pullRequest"]["body"] for cs in json.loads(done.stdout)["changesets"] if cs["pullRequest"]]
    return str(bodies[0])


def stylesheet(css_dir: Path) -> Path:
    css = css_dir / "node_modules" / "github-markdown-css" / "github-markdown-light.css"
    if not css.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit(f"{css} is missing and npm is not on PATH: npm install github-markdown-css in {css_dir}")
        css_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "github-markdown-css@5"],
                       cwd=css_dir, check=True, timeout=600)  # fmt: skip
    return css


def page(body: str, css: Path, *, width: int) -> str:
    import cmarkgfm
    from cmarkgfm.cmark import Options

    rendered = cmarkgfm.github_flavored_markdown_to_html(body, options=Options.CMARK_OPT_UNSAFE)
    title = html.escape(next((line for line in body.splitlines() if line.startswith("#")), "a pull request"))
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="{css.as_uri()}">
<style>body {{ margin: 0; background: #fff; }}
.markdown-body {{ box-sizing: border-box; width: {width}px; padding: 32px; }}</style>
</head><body><article class="markdown-body">
{rendered}
</article></body></html>
"""


def screenshot(html_file: Path, png: Path, *, width: int, height: int, chromium: str) -> None:
    with tempfile.TemporaryDirectory(prefix="pr-screenshot-") as profile:
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", f"--screenshot={png}", html_file.as_uri()],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0], allow_abbrev=False)
    parser.add_argument("--body", type=Path, help="a PR body in Markdown (default: the demo's, from writeback plan)")
    parser.add_argument("--width", type=int, default=1000, help="the viewport's width in px (default: 1000)")
    parser.add_argument("--height", type=int, default=2600, help="the viewport's height in px (default: 2600)")
    parser.add_argument("--css-dir", type=Path, default=CSS_DIR,
                        help=f"where github-markdown-css is (default: {CSS_DIR})")  # fmt: skip
    found = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    parser.add_argument("--chromium", default=found, help="the Chromium binary (default: chromium on PATH)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args()
    body = args.body.read_text(encoding="utf-8") if args.body else demo_body()
    html_file = args.output.with_suffix(".html")
    html_file.write_text(page(body, stylesheet(args.css_dir), width=args.width), encoding="utf-8")
    screenshot(html_file, args.output, width=args.width, height=args.height, chromium=args.chromium)
    print(f"{args.output} ({args.width}x{args.height} px), from {html_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
