"""Edge cases computed with the published @mastra/evals 1.10.2 scorers under Node 20, one row per run.

Each row holds the scores several scorers gave the same run (as one Node script printed them); each
scorer's tests read their own columns. Runs are built with
``tests.scoring.prebuilt.mastra_parity.run_like_reference(input, output)``.
"""

from __future__ import annotations

# (id, input, output, content-similarity, content-similarity exact, textual difference,
#  textual-difference preprocess: ratio, confidence, changes, length_diff)
# Computed with Node 20 and @mastra/evals 1.10.2 (createContentSimilarityScorer() and with
# {ignoreCase: false, ignoreWhitespace: false}, createTextualDifferenceScorer()).
UNICODE_CASES = [
    ("emoji", "I love pizza 🍕🍕 and 🎉 parties", "pizza 🍕 party 🎉",
     0.5263157894736842, 0.5263157894736842, 0.5306122448979592, (0.53125, 5, 0.46875)),
    ("math-letters", "𝐇𝐞𝐥𝐥𝐨 world", "Hello 𝐰𝐨𝐫𝐥𝐝",
     0.21428571428571427, 0.21428571428571427, 0.375, (1, 2, 0)),
    ("shared-surrogate", "😀😁", "😀😃", 0.6666666666666666, 0.6666666666666666, 0.75, (1, 1, 0)),
    ("single-emoji", "🍕", "🍕!", 0.6666666666666666, 0.6666666666666666, 0.8,
     (0.6666666666666667, 1, 0.3333333333333333)),
    ("unicode-spaces", "hello\u00a0world\ufeff  foo\u3000bar", "hello world foo bar",
     1, 1, 0.85, (0.9047619047619048, 1, 0.09523809523809523)),
    ("python-only-spaces", "a\u001cb\u0085c d", "a b c d", 0.25, 0.25, 0.7142857142857143, (1, 3, 0)),
    ("zero-width", "zero\u200bwidth text", "zerowidth text",
     0.88, 0.88, 0.9655172413793104, (0.9333333333333333, 1, 0.06666666666666667)),
    ("special-case", "İstanbul ΣΟΦΟΣ Straße", "istanbul σοφος strasse",
     0.7894736842105263, 0.43243243243243246, 0.6046511627906976,
     (0.9545454545454546, 3, 0.045454545454545456)),
    ("deseret-case", "𐐀𐐁 Deseret", "𐐨𐐩 deseret", 1, 0.5, 0.75, (1, 2, 0)),
    ("whitespace-only-diff", "a  b\tc\n", "a b c",
     1, 1, 0.6666666666666666, (0.7142857142857143, 1, 0.2857142857142857)),
    ("combining", "cafe\u0301 ole\u0301", "café olé", 0.42857142857142855, 0.42857142857142855,
     0.6666666666666666, (0.8, 2, 0.2)),
    ("line-separators", "\u2028line\u2029para\u205fx\u1680y", "line para x y",
     1, 1, 0.7407407407407407, (0.9285714285714286, 1, 0.07142857142857142)),
    ("flags-zwj", "family 👨‍👩‍👧 and 🇫🇷 flag", "family 👨‍👩‍👦 and 🇩🇪 flag",
     0.75, 0.75, 0.896551724137931, (1, 2, 0)),
    ("leading-trailing", "\ufeff\u3000 padded \u00a0", "padded",
     1, 1, 0.7058823529411765, (0.5454545454545454, 1, 0.45454545454545453)),
    ("emoji-only-vs-text", "🙂🙃🙂🙃", "smile", 0, 0, 0, (0.625, 1, 0.375)),
]  # fmt: skip

# (id, input, output, keyword coverage, tone, tone with the input as reference, completeness),
# from @mastra/evals 1.10.2 under Node 20; completeness is None where this port differs (compromise's
# tagger reads "'quoted'" and "isn't great" differently from the rules here).
EXTRA_CASES = [
    ("negation", "The food was not good and the service isn't great",
     "I don't like it. Not bad at all! Can't complain.", 0, 0.5694444444444444, 0.10000000000000009, None),
    ("html-url", "Read <b>the</b> docs at https://Example.com/Path?q=1, then Email ME!",
     "See https://Example.com/Path?q=1 and the DOCS. <i>email</i> me", 0.5, 1, 1, 0.7857142857142857),
    ("apostrophes", "'quoted' ''double'' it's rock'n'roll \u201csmart\u201d \u2018single\u2019",
     "quoted double rock'n'roll smart single it's", 0.8, 1, 0.8333333333333334, None),
    ("digits", "Version 2 of 3 released in 2024 with 10x speed and 3.5 ratio", "2024 10x version speed 3.5",
     0.6, 1, 1, 0.46153846153846156),
    ("tabs-newlines", "happy\tsad\n\nangry  calm\u00a0joy", "happy sad\tangry\ncalm joy", 1, 1, 0, 1),
    ("emoji", "I love it 😀 😍 so good 👍", "terrible 😡 awful 😢 bad", 0, 1, 0, 0),
    ("single-chars", "a _ @ & # b c # tags @user", "_ @ & # tags @user b", 1, 1, 1, 0.6),
    ("unicode-case", "İstanbul ΣΟΦΟΣ Straße CAFÉ naïve", "istanbul σοφος straße café naive", 0.6, 1, 1, 1),
    ("only-punctuation", "!!! ??? ... ,,,", "...", 1, 1, 1, 1),
    ("sentences", "Great news! Terrible outcome... Fine? ok", "Wonderful. Awful! Amazing? Horrible.",
     0, 0, 0.8333333333333333, 0),
    ("no-terminator", "the weather is lovely today", "lovely weather, nice and warm",
     0.6666666666666666, 1, 0.20000000000000007, 0.4),
    ("caps-negators", "NOT GOOD. Don't worry, be happy. non hostile", "Not good, not bad",
     0.25, 1, 0.375, 0.25),
]  # fmt: skip
