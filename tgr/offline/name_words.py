"""What the English and Chinese name finders (and tgr.build.resolve) share: word lists and the
Chinese short-form rule, kept once so the finders cannot drift apart."""
from __future__ import annotations

from ..text import compiled

CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # for a character class: Han ideographs

MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")
MONTHS = frozenset(m.lower() for m in MONTH_NAMES)
MONTH_PATTERN = "(?:" + "|".join(MONTH_NAMES) + ")"  # a capitalised month name, for a regular expression
MONTH_ABBREVIATIONS = frozenset("jan feb mar apr may jun jul aug sep sept oct nov dec".split())
DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# Chinese words of speech and narration, pronouns, measure words ("闻言", "二人", "只见"): no
# names (jieba tags some as one), and, as common in one part of a text as in any other, no key
# phrases either
CHINESE_FUNCTION_WORDS = frozenset("""闻言 二人 三人 四人 两人 众人 大家 我们 你们 他们 她们 咱们 我等 汝等 你等 自家 自己
    一个 一声 一齐 一般 一面 一时 一日 一阵 一处 一条 一只 一口 一座 一番 一场 一对 两个 三个 几个 些儿
    不是 不曾 不敢 不得 不能 不可 不见 不知 不要 不必 没有 知道 可以 已经 如何 怎么 怎生 怎的 甚么 什么
    那里 这里 那个 这个 这般 那般 如此 这等 那等 只得 只是 却是 原来 须臾 即便 便是 正是 就是 还是 都是
    却说 话说 且说 今日 今番 此时 此处 当时 那厮 左右 上前 出来 起来 下来 进来 过来 回来 出去 上来 下去
    说道 笑道 问道 答道 叫道 喝道 骂道 言道 道是 听得 看见 见了 有些 有个 只管 心中 手中 面前 门前 身边
    之间 之上 之下 之中 如今 为何 何处 何人 因为 所以 但是 然后 于是 而且 虽然 如果 因此 那时 这时 不过
    时候 东西 怎样 这样 那样 一样 许多 多少 一些 有人 无人 只见 但见 忽见 又见 不觉 果然 真个 端的""".split())

# titles written after a Chinese name (须菩提祖师, 观音菩萨, 镇元大仙) and, alone, for its one bearer
# in a story ("祖师道"): tgr.offline.names_zh finds both, tgr.build.resolve joins the bare title
# to the one titled name of the document (or to none)
CHINESE_TITLES = frozenset("""祖师 真人 大仙 菩萨 老祖 星君 真君 天尊 老君 尊者 元帅 天王 大圣 禅师 法师 国师
    长老 龙王 魔王 道人 仙姑 娘娘 罗汉 金刚 力士 仙翁""".split())

# the commonest one-character Chinese surnames: 悟空 is 孙悟空's given name, 和尚 no one's (tgr.build.resolve)
CHINESE_SURNAMES = frozenset("""王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶
    程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴
    莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单
    季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳穆农司卓古吉缪简车项连麦褚娄窦戚岑景
    党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩佘池查麻苑迟邝""".replace("\n", "").replace(" ", ""))


def chinese_given_name(name: str) -> str | None:
    """悟空 of 孙悟空: the given name of a three-character name that starts with a common
    surname, else None."""
    return name[1:] if len(name) == 3 and name[0] in CHINESE_SURNAMES else None


def chinese_short_forms(names, *, min_length: int = 2) -> dict[str, str]:
    """香港特区 -> 香港特别行政区: a short form and the one longer name with the same first and
    last character and the rest in order. Only when exactly one longer name fits, so an
    ambiguous short form stays itself; names under min_length characters are left alone."""
    han = compiled(f"[{CJK_CHARS}]+").fullmatch  # (when first needed, not by every `tgr ask` importing this)
    by_ends: dict[tuple[str, str], list[str]] = {}  # a short form meets only the names of its ends
    for name in names:
        if han(name):
            by_ends.setdefault((name[0], name[-1]), []).append(name)
    joined = {}
    for group in by_ends.values():
        if len(group) < 2:
            continue  # (most names: alone with their ends)
        for short in group:
            if len(short) < min_length:
                continue
            longer = [n for n in group if len(n) > len(short) and _in_order(short, n)]
            if len(longer) == 1:
                joined[short] = longer[0]
    return joined


def _in_order(short: str, long: str) -> bool:
    rest = iter(long)
    return all(char in rest for char in short)
