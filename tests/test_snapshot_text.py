"""snapshot_text's filtered reads on the YAML Playwright writes for a real single-page application.

The snapshots below are Playwright's ai-mode YAML as optuna-dashboard (a React application)
rendered it, trimmed to the parts each test reads: YAML quotes a node line that holds ": ",
a textbox can be named by a placeholder of several hundred characters, and a card's caption
is a heading whose value follows it.
"""

import pytest

from mcpbrowser import snapshot_text

pytestmark = pytest.mark.unit

STUDY_LIST = """- main [ref=e39]:
  - generic [ref=e41]:
    - button "Create" [ref=e60]
    - generic [ref=e68]:
      - generic [ref=e69]:
        - 'link "2. learning-rate Direction: MAXIMIZE" [ref=e70]':
          - /url: /dashboard/studies/2
          - generic [ref=e71]:
            - heading "2. learning-rate" [level=5] [ref=e72]
            - generic [ref=e73]: "Direction: MAXIMIZE"
        - generic [ref=e74]:
          - button "delete study" [ref=e78]
      - generic [ref=e81]:
        - 'link "1. quadratic Direction: MINIMIZE" [ref=e82]':
          - /url: /dashboard/studies/1
          - generic [ref=e83]:
            - heading "1. quadratic" [level=5] [ref=e84]
            - generic [ref=e85]: "Direction: MINIMIZE"
        - generic [ref=e86]:
          - button "delete study" [ref=e90]"""

PLACEHOLDER = ("## What is this feature for?\\n\\nHere you can freely take a note in *(GitHub flavored) Markdown "
               "format*.\\nIn addition, **code blocks with syntax highlights** and **formula** are also supported "
               "here, as shown below.\\n\\n### Code-block with Syntax Highlights\\n\\n```python\\ndef objective("
               "trial):\\n    x = trial.suggest_float(\\\"x\\\", -10, 10)\\n```\\n")
EDITOR = f"""- main [ref=e275]:
  - generic [ref=e764]: Markdown Editor
  - textbox "{PLACEHOLDER.replace(chr(92) + 'n', ' ')}" [ref=e773]:
    - /placeholder: "{PLACEHOLDER}"
  - button "Close" [ref=e776]
  - button "Save" [disabled]"""

TRIAL = """- main [ref=e275]:
  - generic [ref=e335]:
    - heading "Best Trial (number=11)" [level=6] [ref=e336]
    - heading "0.3415153406446071" [level=3] [ref=e337]
    - paragraph [ref=e338]: "Params = [x: 1.415606861227301, y: 0]"
    - link "Details" [ref=e339]:
      - /url: /dashboard/studies/1/trials?numbers=11
  - generic [ref=e720]:
    - heading "Trial 11 (trial_id=12)" [level=4] [ref=e721]
    - heading "Note" [level=5] [ref=e726]
    - button [ref=e729]
    - generic [ref=e732]:
      - paragraph [ref=e734]: Value
    - heading "Intermediate Values" [level=5] [ref=e737]
    - paragraph [ref=e738]: none"""


def test_a_control_whose_name_holds_a_colon_is_still_a_control():
    """YAML single-quotes `- 'link "… Direction: MAXIMIZE" [ref=e70]':`; read as any other link,
    it is the match (with its ref and /url), not the bare text inside it."""
    found, matches = snapshot_text.find(STUDY_LIST, "Direction", 30)
    assert matches == 2
    assert '- link "2. learning-rate Direction: MAXIMIZE" [ref=e70]' in found
    assert '- link "1. quadratic Direction: MINIMIZE" [ref=e82]' in found
    assert "/url: /dashboard/studies/1" in found and "e85" not in found and "'" not in found
    assert '- link "1. quadratic Direction: MINIMIZE" [ref=e82]' in snapshot_text.compact(STUDY_LIST)


def test_a_long_name_is_cut_but_never_its_ref():
    found, _ = snapshot_text.find(EDITOR, "Markdown|Save", 30)
    box = next(line for line in found.splitlines() if "- textbox" in line)
    assert box.endswith("[ref=e773]") and "…" in box and len(box.strip()) <= snapshot_text.MAX_LINE + 20
    placeholder = next(line for line in found.splitlines() if "/placeholder" in line)
    assert placeholder.endswith("…") and len(placeholder.strip()) <= snapshot_text.MAX_LINE + 1
    assert len(found) < len(EDITOR) // 2


def test_a_matched_heading_brings_the_first_lines_it_titles():
    """A card's value under its caption, and the icon button beside a "Note" heading, come with
    the heading: no second read of its section."""
    found, matches = snapshot_text.find(TRIAL, "Best Trial|Note", 30)
    assert matches == 2
    lines = found.splitlines()
    best = lines.index('  - heading "Best Trial (number=11)" [level=6] [ref=e336]')
    assert lines[best + 1:best + 3] == ['  - heading "0.3415153406446071" [level=3] [ref=e337]',
                                        '  - paragraph [ref=e338]: "Params = [x: 1.415606861227301, y: 0]"']
    assert "Details" not in found  # two lines at most
    note = lines.index('  - heading "Note" [level=5] [ref=e726]')
    # a wrapper without text is passed over (not looked into), and the next level-5 heading ends it
    assert lines[note + 1] == "  - button [ref=e729]" and "Value" not in found


def test_the_lines_a_heading_brings_stop_at_the_next_heading_of_its_rank():
    found, _ = snapshot_text.find(TRIAL, "Note|Intermediate", 30)
    lines = found.splitlines()
    assert lines.count('  - heading "Intermediate Values" [level=5] [ref=e737]') == 1
    assert lines[lines.index('  - heading "Intermediate Values" [level=5] [ref=e737]') + 1] == \
        "  - paragraph [ref=e738]: none"
