"""An offline probe, not part of the product or its tests: how much a learned ranking over
the signals the scoring already has would gain, before one is built into the engine.

`cargo xtask eval --corpus --changes … --out DIR` writes, for every question, the best 50
candidates of the ranking with their signals and whether each is a target (`candidates` in
`DIR/run-*.jsonl`). This fits a LambdaMART model (LightGBM) and a logistic regression on the
tuning half and re-ranks those candidates on the test half, macro-averaged over repositories
per kind: (share of questions whose first result is a target, any target in the top 10, MRR).

    pip install numpy scikit-learn lightgbm
    python3 xtask/experiments/ltr_probe.py DIR
"""
import json, glob, os, sys, tomllib, math

HERE = os.path.dirname(os.path.abspath(__file__))
import numpy as np
KINDS = ['function','method','constructor','getter','setter','property','class','interface','type','enum','component','variable','const','namespace','expression','statement','export','comment']
def feats(c):
    f = [c['score'], c['lexical'], c['name'], c['quoted'], c['vector'], c['coverage'],
         math.log1p(c['terms']), float(c['test']), float(c['companion']),
         math.log1p(c['lines']), c['depth'], float(c['exported'])]
    f += [float(c['kind'] == k) for k in KINDS]
    return f
splits = {}
for r in tomllib.load(open(os.path.join(HERE, '..', 'changes-corpus.toml'), 'rb'))['repo']:
    splits[r['name'].replace('/', '+')] = r['split']
for p in tomllib.load(open(os.path.join(HERE, '..', 'tuning-corpus.toml'), 'rb'))['package']:
    splits[p['name'].replace('/', '+')] = p['split']
data = []  # (kind, split, repo, X, y)
for f in glob.glob(sys.argv[1] + '/run-*.jsonl'):
    base = os.path.basename(f)[4:-6]
    kind, name = (base.split('-', 1) if base.split('-', 1)[0] in ('change', 'long') else ('doc', base))
    if name not in splits: continue
    for line in open(f):
        q = json.loads(line)
        cs = q.get('candidates') or []
        if not cs: continue
        X = np.array([feats(c) for c in cs]); y = np.array([int(c['label']) for c in cs])
        data.append((kind, splits[name], name, X, y))
def metrics(order_scores, y):
    order = np.argsort(-order_scores, kind='stable')
    ys = y[order]
    pos = np.nonzero(ys)[0]
    any10 = float(len(pos) and pos[0] < 10); a1 = float(len(pos) and pos[0] == 0)
    mrr = 1.0 / (pos[0] + 1) if len(pos) and pos[0] < 10 else 0.0
    return a1, any10, mrr
def report(score_fn, label):
    out = {}
    for kind, split, repo, X, y in data:
        if split != 'test': continue
        out.setdefault((kind, repo), []).append(metrics(score_fn(X), y))
    by_kind = {}
    for (kind, repo), ms in out.items():
        by_kind.setdefault(kind, []).append(np.mean(ms, axis=0))
    print(label, {k: tuple(round(float(x), 3) for x in np.mean(v, axis=0)) for k, v in sorted(by_kind.items())})
report(lambda X: X[:, 0], 'current (a1, any10, mrr)')
tune = [(X, y) for kind, split, repo, X, y in data if split == 'tune' and y.any()]
# equal weight per repository: weight each question by 1 / questions of its repo and kind
from collections import Counter
cnt = Counter((k, r) for k, s, r, X, y in data if s == 'tune' and y.any())
wq = [1.0 / cnt[(k, r)] for k, s, r, X, y in data if s == 'tune' and y.any()]
import lightgbm as lgb
Xt = np.vstack([X for X, y in tune]); yt = np.concatenate([y for X, y in tune]); groups = [len(y) for X, y in tune]
model = lgb.LGBMRanker(objective='lambdarank', n_estimators=200, learning_rate=0.05, num_leaves=15, min_child_samples=20, deterministic=True, seed=1, verbose=-1)
model.fit(Xt, yt, group=groups)
report(lambda X: model.predict(X), 'lambdamart')
from sklearn.linear_model import LogisticRegression
sw = np.concatenate([[w] * len(y) for (X, y), w in zip(tune, wq)])
lr = LogisticRegression(max_iter=2000, C=1.0).fit(Xt, yt, sample_weight=sw)
report(lambda X: lr.decision_function(X), 'logistic')
# Without the hand formula's score as a feature: the signals alone.
Xt2 = Xt[:, 1:]
m2 = lgb.LGBMRanker(objective='lambdarank', n_estimators=200, learning_rate=0.05, num_leaves=15, min_child_samples=20, deterministic=True, seed=1, verbose=-1)
m2.fit(Xt2, yt, group=groups)
report(lambda X: m2.predict(X[:, 1:]), 'lambdamart, no hand score')
for n in (50, 100):
    m3 = lgb.LGBMRanker(objective='lambdarank', n_estimators=n, learning_rate=0.05, num_leaves=7, min_child_samples=20, deterministic=True, seed=1, verbose=-1)
    m3.fit(Xt, yt, group=groups)
    report(lambda X: m3.predict(X), f'lambdamart {n} trees, 7 leaves')
print('tune questions', len(tune), 'candidates', len(yt), 'positives', int(yt.sum()))
