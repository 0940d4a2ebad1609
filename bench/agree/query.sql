-- SPDX-License-Identifier: MIT
-- bench/agree/query.sql - a heavy sqlite3 query for bench/perf_agree.py:
-- rows from a recursive CTE, an index build, a join, grouping and a sort.
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
INSERT INTO t SELECT x, (x * 2654435761) % 10007, printf('%08x', (x * 40503) % 1000003) FROM c;
CREATE INDEX t_k ON t(k);
SELECT count(*), sum(length(g)) FROM (
	SELECT a.k, group_concat(b.s) AS g
	FROM t AS a JOIN t AS b ON b.k = (a.k * 7) % 10007
	WHERE a.id % 5 = 0
	GROUP BY a.k
	ORDER BY g DESC);
SELECT s, count(*) AS n FROM t GROUP BY substr(s, 3, 4) ORDER BY n DESC, s LIMIT 3;
