"""The block, the room block and the admin page in every language that ships a catalog.

Each page is read as a visitor in that language gets it (LocaleMiddleware and
Accept-Language), with real data in Redis; the plural tests render the tag
under ``translation.override`` for the counts where Polish, Russian, Ukrainian
and Arabic change form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
import redis
import time_machine
from django.contrib.auth.models import User
from django.core.management import call_command
from django.template import engines
from django.utils import formats, timezone, translation

from tests.conftest import NOW, BrowserClient
from whos_online import presence

pytestmark = pytest.mark.django_db

PAGE = "/admin/whos_online/onlinenow/"

# Per language (Accept-Language code): the headings that name the site block and
# the room block, the blocks as an anonymous visitor reads them (after the
# heading), and the admin page's summary, its chart's label and legend, and the
# table's heading and hidden member's row as staff read them.
# {date} and {time} are the peak's, in the language's own format.
PAGES: dict[str, dict[str, str]] = {
    "fr": {
        "site heading": "En ligne sur le site",
        "room heading": "Lecteurs de cette page",
        "block": "7 utilisateurs en ligne : 4 membres (dont 1 masqué), 3 invités Alice Membre n° {pk}"
        " et 1 autre Record : 7 utilisateurs en ligne le {date}."
        " Au total, 7 utilisateurs ont été en ligne au cours des dernières 24 heures."
        " D’après les utilisateurs actifs au cours des 10 dernières minutes.",
        "room": "3 ici en ce moment : 2 membres, 1 invité Alice Bob D’après les utilisateurs actifs au cours des 10 dernières minutes.",
        "admin": "8 utilisateurs en ligne : 5 membres (dont 1 masqué), 3 invités."
        " Record : 8 utilisateurs en ligne le {date} à {time}.",
        "chart": "Membres et invités en ligne, 2 mesures",
        "legend": "membres invités le moment de plus forte affluence",
        "table": "Membre Statut Dernière activité",
        "hidden": "Shy (masqué) en ligne",
        "title": "En ligne maintenant",
        "day": "Actifs au cours des dernières 24 heures : 8 (membres : 5, invités : 3).",
        "visitors": "Visiteurs uniques par jour, 30 derniers jours Jour Membres Invités Total",
    },
    "de": {
        "site heading": "Online auf der Website",
        "room heading": "Leser dieser Seite",
        "block": "7 Benutzer online: 4 Mitglieder (davon 1 verborgen), 3 Gäste Alice Mitglied Nr. {pk}"
        " und 1 weiterer Rekord: 7 Benutzer gleichzeitig online am {date}."
        " Insgesamt waren in den letzten 24 Stunden 7 Benutzer online."
        " Berücksichtigt sind Benutzer, die in den letzten 10 Minuten aktiv waren.",
        "room": "3 gerade hier: 2 Mitglieder, 1 Gast Alice Bob Berücksichtigt sind Benutzer, die in den letzten 10 Minuten aktiv waren.",
        "admin": "8 Benutzer online: 5 Mitglieder (davon 1 verborgen), 3 Gäste."
        " Rekord: 8 Benutzer gleichzeitig online am {date} um {time} Uhr.",
        "chart": "Mitglieder und Gäste online, 2 Messpunkte",
        "legend": "Mitglieder Gäste der Höchststand",
        "table": "Mitglied Status Zuletzt gesehen",
        "hidden": "Shy (verborgen) online",
        "title": "Jetzt online",
        "day": "Aktiv in den letzten 24 Stunden: 8 (Mitglieder: 5, Gäste: 3).",
        "visitors": "Eindeutige Besucher pro Tag, letzte 30 Tage Tag Mitglieder Gäste Gesamt",
    },
    "es": {
        "site heading": "En línea en el sitio",
        "room heading": "Leyendo esta página",
        "block": "7 usuarios en línea: 4 miembros (1 oculto), 3 invitados Alice Miembro n.º {pk}"
        " y 1 más Récord: 7 usuarios en línea el {date}."
        " En total, 7 usuarios estuvieron en línea en las últimas 24 horas."
        " Según los usuarios activos en los últimos 10 minutos.",
        "room": "3 aquí ahora: 2 miembros, 1 invitado Alice Bob Según los usuarios activos en los últimos 10 minutos.",
        "admin": "8 usuarios en línea: 5 miembros (1 oculto), 3 invitados."
        " Récord: 8 usuarios en línea el {date} a las {time}.",
        "chart": "Miembros e invitados en línea, 2 muestras",
        "legend": "miembros invitados el momento de mayor actividad",
        "table": "Miembro Estado Última actividad",
        "hidden": "Shy (oculto) en línea",
        "title": "En línea ahora",
        "day": "Activos en las últimas 24 horas: 8 (miembros: 5, invitados: 3).",
        "visitors": "Visitantes únicos por día, últimos 30 días Día Miembros Invitados Total",
    },
    "it": {
        "site heading": "Online sul sito",
        "room heading": "Lettori di questa pagina",
        "block": "7 utenti online: 4 membri (di cui 1 nascosto), 3 ospiti Alice Membro n. {pk}"
        " e 1 altro Record: 7 utenti online il {date}."
        " In totale ci sono stati 7 utenti online nelle ultime 24 ore."
        " In base agli utenti attivi negli ultimi 10 minuti.",
        "room": "3 presenti ora: 2 membri, 1 ospite Alice Bob In base agli utenti attivi negli ultimi 10 minuti.",
        "admin": "8 utenti online: 5 membri (di cui 1 nascosto), 3 ospiti."
        " Record: 8 utenti online il {date} alle {time}.",
        "chart": "Membri e ospiti online, 2 rilevazioni",
        "legend": "membri ospiti il momento di picco",
        "table": "Membro Stato Ultima attività",
        "hidden": "Shy (nascosto) online",
        "title": "Online adesso",
        "day": "Attivi nelle ultime 24 ore: 8 (membri: 5, ospiti: 3).",
        "visitors": "Visitatori unici al giorno, ultimi 30 giorni Giorno Membri Ospiti Totale",
    },
    "pt-br": {
        "site heading": "Online no site",
        "room heading": "Lendo esta página",
        "block": "7 usuários online: 4 membros (1 oculto), 3 visitantes Alice Membro nº {pk}"
        " e mais 1 Recorde: 7 usuários online em {date}."
        " No total, 7 usuários estiveram online nas últimas 24 horas."
        " Com base nos usuários ativos nos últimos 10 minutos.",
        "room": "3 aqui agora: 2 membros, 1 visitante Alice Bob Com base nos usuários ativos nos últimos 10 minutos.",
        "admin": "8 usuários online: 5 membros (1 oculto), 3 visitantes."
        " Recorde: 8 usuários online em {date} às {time}.",
        "chart": "Membros e visitantes online, 2 amostras",
        "legend": "membros visitantes o momento de pico",
        "table": "Membro Status Visto por último",
        "hidden": "Shy (oculto) online",
        "title": "Online agora",
        "day": "Ativos nas últimas 24 horas: 8 (membros: 5, visitantes: 3).",
        "visitors": "Visitantes únicos por dia, últimos 30 dias Dia Membros Visitantes Total",
    },
    "nl": {
        "site heading": "Online op de site",
        "room heading": "Lezers van deze pagina",
        "block": "7 gebruikers online: 4 leden (waarvan 1 verborgen), 3 gasten Alice Lid nr. {pk}"
        " en nog 1 Record: 7 gebruikers online op {date}."
        " In totaal waren er in de afgelopen 24 uur 7 gebruikers online."
        " Op basis van gebruikers die de afgelopen 10 minuten actief waren.",
        "room": "3 nu hier: 2 leden, 1 gast Alice Bob Op basis van gebruikers die de afgelopen 10 minuten actief waren.",
        "admin": "8 gebruikers online: 5 leden (waarvan 1 verborgen), 3 gasten."
        " Record: 8 gebruikers online op {date} om {time}.",
        "chart": "Leden en gasten online, 2 metingen",
        "legend": "leden gasten het drukste moment",
        "table": "Lid Status Laatst gezien",
        "hidden": "Shy (verborgen) online",
        "title": "Nu online",
        "day": "Actief in de afgelopen 24 uur: 8 (leden: 5, gasten: 3).",
        "visitors": "Unieke bezoekers per dag, afgelopen 30 dagen Dag Leden Gasten Totaal",
    },
    "pl": {
        "site heading": "Online w serwisie",
        "room heading": "Czytają tę stronę",
        "block": "7 osób online: 4 członków (w tym 1 ukryty), 3 gości Alice Członek nr {pk}"
        " i jeszcze 1 Rekord: 7 osób online {date}."
        " Łącznie w ciągu ostatnich 24 godzin online było 7 osób."
        " Na podstawie osób aktywnych w ciągu ostatnich 10 minut.",
        "room": "3 osoby są tu teraz: 2 członków, 1 gość Alice Bob Na podstawie osób aktywnych w ciągu ostatnich 10 minut.",
        "admin": "8 osób online: 5 członków (w tym 1 ukryty), 3 gości."
        " Rekord: 8 osób online {date} o {time}.",
        "chart": "Członkowie i goście online, 2 próbki",
        "legend": "członkowie goście moment największego ruchu",
        "table": "Członek Status Ostatnio widziany",
        "hidden": "Shy (ukryty) online",
        "title": "Teraz online",
        "day": "Aktywni w ciągu ostatnich 24 godzin: 8 (członkowie: 5, goście: 3).",
        "visitors": "Unikalni odwiedzający dziennie, ostatnie 30 dni Dzień Członkowie Goście Razem",
    },
    "ru": {
        "site heading": "Сейчас на сайте",
        "room heading": "Читают эту страницу",
        "block": "7 пользователей онлайн: 4 участника (из них 1 скрытый), 3 гостя Alice Участник № {pk}"
        " и ещё 1 Рекорд посещаемости: 7 пользователей онлайн {date}"
        " Всего за последние 24 часа онлайн было 7 пользователей."
        " Учитываются пользователи, активные за последние 10 минут.",
        "room": "3 человека сейчас здесь: 2 участника, 1 гость Alice Bob Учитываются пользователи, активные за последние 10 минут.",
        "admin": "8 пользователей онлайн: 5 участников (из них 1 скрытый), 3 гостя."
        " Рекорд посещаемости: 8 пользователей онлайн {date} в {time}.",
        "chart": "Участники и гости онлайн, 2 замера",
        "legend": "участники гости момент наибольшей посещаемости",
        "table": "Участник Статус Последняя активность",
        "hidden": "Shy (скрыт) онлайн",
        "title": "Сейчас онлайн",
        "day": "Активны за последние 24 часа: 8 (участники: 5, гости: 3).",
        "visitors": "Уникальные посетители по дням, последние 30 дней День Участники Гости Всего",
    },
    "uk": {
        "site heading": "Зараз на сайті",
        "room heading": "Читають цю сторінку",
        "block": "7 користувачів онлайн: 4 учасники (з них 1 прихований), 3 гості Alice Учасник № {pk}"
        " і ще 1 Рекорд відвідуваності: 7 користувачів онлайн {date}"
        " Усього за останні 24 години онлайн було 7 користувачів."
        " Враховано користувачів, активних за останні 10 хвилин.",
        "room": "3 людини зараз тут: 2 учасники, 1 гість Alice Bob Враховано користувачів, активних за останні 10 хвилин.",
        "admin": "8 користувачів онлайн: 5 учасників (з них 1 прихований), 3 гості."
        " Рекорд відвідуваності: 8 користувачів онлайн {date} о {time}.",
        "chart": "Учасники й гості онлайн, 2 виміри",
        "legend": "учасники гості момент найбільшої відвідуваності",
        "table": "Учасник Статус Остання активність",
        "hidden": "Shy (прихований) онлайн",
        "title": "Зараз онлайн",
        "day": "Активні за останні 24 години: 8 (учасники: 5, гості: 3).",
        "visitors": "Унікальні відвідувачі за день, останні 30 днів День Учасники Гості Усього",
    },
    "tr": {
        "site heading": "Sitede çevrimiçi",
        "room heading": "Bu sayfayı okuyanlar",
        "block": "7 kullanıcı çevrimiçi: 4 üye (1 gizli), 3 misafir Alice Üye #{pk}"
        " ve 1 kişi daha En yüksek çevrimiçi sayısı: 7 kullanıcı, {date}."
        " Son 24 saatte toplam 7 kullanıcı çevrimiçiydi."
        " Son 10 dakika içinde etkin olan kullanıcılara göre.",
        "room": "Şu an burada 3 kişi: 2 üye, 1 misafir Alice Bob Son 10 dakika içinde etkin olan kullanıcılara göre.",
        "admin": "8 kullanıcı çevrimiçi: 5 üye (1 gizli), 3 misafir."
        " En yüksek çevrimiçi sayısı: 8 kullanıcı, {date} saat {time}.",
        "chart": "Çevrimiçi üyeler ve misafirler, 2 ölçüm",
        "legend": "üyeler misafirler en yoğun an",
        "table": "Üye Durum Son görülme",
        "hidden": "Shy (gizli) çevrimiçi",
        "title": "Şu an çevrimiçi",
        "day": "Son 24 saatte etkin: 8 (üyeler: 5, misafirler: 3).",
        "visitors": "Günlük tekil ziyaretçiler, son 30 gün Gün Üyeler Misafirler Toplam",
    },
    "ar": {
        "site heading": "متصلون بالموقع",
        "room heading": "يقرؤون هذه الصفحة",
        "block": "7 مستخدمين متصلين: 4 أعضاء (منهم واحد مخفي)، 3 ضيوف Alice العضو رقم {pk}"
        " وواحد آخر أكبر عدد من المتصلين: 7 مستخدمين في {date}."
        " إجمالًا، اتصل 7 مستخدمين خلال آخر 24 ساعة."
        " بناءً على المستخدمين النشطين في آخر 10 دقائق.",
        "room": "3 أشخاص هنا الآن: عضوان، ضيف واحد Alice Bob بناءً على المستخدمين النشطين في آخر 10 دقائق.",
        "admin": "8 مستخدمين متصلين: 5 أعضاء (منهم واحد مخفي)، 3 ضيوف."
        " أكبر عدد من المتصلين: 8 مستخدمين في {date} الساعة {time}.",
        "chart": "الأعضاء والضيوف المتصلون، عينتان",
        "legend": "الأعضاء الضيوف لحظة الذروة",
        "table": "العضو الحالة آخر ظهور",
        "hidden": "Shy (مخفي) متصل",
        "title": "المتصلون الآن",
        "day": "النشطون في آخر 24 ساعة: 8 (الأعضاء: 5، الضيوف: 3).",
        "visitors": "الزوار الفريدون يوميًا، آخر 30 يومًا اليوم الأعضاء الضيوف المجموع",
    },
    "ja": {
        "site heading": "サイト全体でオンライン",
        "room heading": "このページを閲覧中",
        "block": "オンライン7人：メンバー4人（うち非表示1人）、ゲスト3人 Alice メンバー #{pk}"
        " ほか1人 過去最多：{date}に7人がオンライン。"
        " 過去24時間にオンラインだったユーザーは合計7人です。"
        " 過去10分間にアクティブだったユーザーに基づいています。",
        "room": "ここに3人：メンバー2人、ゲスト1人 Alice Bob 過去10分間にアクティブだったユーザーに基づいています。",
        "admin": "オンライン8人：メンバー5人（うち非表示1人）、ゲスト3人."
        " 過去最多：{date} {time}に8人がオンライン。",
        "chart": "オンラインのメンバーとゲスト（記録2件）",
        "legend": "メンバー ゲスト 最も混雑した時刻",
        "table": "メンバー 状態 最終アクセス",
        "hidden": "Shy (非表示) オンライン",
        "title": "現在オンライン",
        "day": "過去24時間のアクティブ数：8（メンバー：5、ゲスト：3）。",
        "visitors": "1日あたりのユニーク訪問者数（過去30日間） 日付 メンバー ゲスト 合計",
    },
    "ko": {
        "site heading": "사이트 전체 접속자",
        "room heading": "이 페이지를 보는 중",
        "block": "접속 중 7명: 회원 4명(숨김 1명), 손님 3명 Alice 회원 #{pk}"
        " 외 1명 최다 동시 접속: {date}, 7명."
        " 최근 24시간 동안 접속한 사용자는 모두 7명입니다."
        " 최근 10분 동안 활동한 사용자 기준입니다.",
        "room": "지금 여기 3명: 회원 2명, 손님 1명 Alice Bob 최근 10분 동안 활동한 사용자 기준입니다.",
        "admin": "접속 중 8명: 회원 5명(숨김 1명), 손님 3명. 최다 동시 접속: {date} {time}, 8명.",
        "chart": "접속 중인 회원과 손님, 측정값 2개",
        "legend": "회원 손님 가장 붐빈 시각",
        "table": "회원 상태 마지막 접속",
        "hidden": "Shy (숨김) 접속 중",
        "title": "현재 접속 중",
        "day": "최근 24시간 활동: 8(회원 5, 손님 3).",
        "visitors": "일별 순 방문자 수, 최근 30일 날짜 회원 손님 합계",
    },
    "zh-hans": {
        "site heading": "全站在线",
        "room heading": "正在阅读本页",
        "block": "7 人在线：4 位会员（其中 1 位隐身），3 位访客 Alice 会员 #{pk}"
        " 还有 1 人 最高在线纪录：7 人，于 {date}。"
        " 过去 24 小时内共有 7 位用户在线。"
        " 根据过去 10 分钟内活跃的用户统计。",
        "room": "此处现有 3 人：2 位会员，1 位访客 Alice Bob 根据过去 10 分钟内活跃的用户统计。",
        "admin": "8 人在线：5 位会员（其中 1 位隐身），3 位访客. 最高在线纪录：8 人，于 {date} {time}。",
        "chart": "在线会员与访客，共 2 个采样",
        "legend": "会员 访客 最繁忙时刻",
        "table": "会员 状态 最后活动",
        "hidden": "Shy (隐身) 在线",
        "title": "当前在线",
        "day": "最近 24 小时活跃：8（会员 5，访客 3）。",
        "visitors": "每日独立访客，最近 30 天 日期 会员 访客 总计",
    },
}


def text(html: str) -> str:
    """What a reader sees: tags dropped, whitespace (and the legend's &nbsp;s) collapsed."""
    return " ".join(re.sub(r"<[^>]+>|&nbsp;", " ", html).split())


@pytest.fixture
def localized(settings: Any) -> Iterator[None]:
    """LocaleMiddleware where Django says: after sessions, so Accept-Language picks."""
    sessions = "django.contrib.sessions.middleware.SessionMiddleware"
    at = settings.MIDDLEWARE.index(sessions) + 1
    settings.MIDDLEWARE = [
        *settings.MIDDLEWARE[:at],
        "django.middleware.locale.LocaleMiddleware",
        *settings.MIDDLEWARE[at:],
    ]
    yield
    # The middleware leaves the request's language active in this thread.
    translation.deactivate()


@pytest.mark.parametrize("language", PAGES)
def test_pages_in_each_language(
    language: str, redis_db: redis.Redis, settings: Any, people: Any, localized: None
) -> None:
    settings.WHOS_ONLINE_MEMBER_CARD = "tests.test_hidden.private_card"
    settings.WHOS_ONLINE_LIST_LIMIT = 2
    settings.WHOS_ONLINE_RETENTION = timedelta(days=1)  # adds the day's total
    (bob,) = people("Bob")
    (shy,) = people("Shy", email="hidden")
    # Known only by an email address: shown as "Member #pk".
    (anonymous,) = people("someone@example.com")
    (alice,) = people("Alice")
    expected = PAGES[language]
    headers = {"Accept-Language": language}
    with time_machine.travel(NOW, tick=False) as traveller:
        for user in (bob, shy, anonymous, alice):
            presence.record_user(user)
        for user in (alice, bob):
            presence.record_user(user, room="thread:1")
        presence.record_guest("203.0.113.1")
        presence.record_guest("203.0.113.2")
        call_command("whos_online_prune", stdout=StringIO())
        traveller.shift(60)
        call_command("whos_online_prune", stdout=StringIO())
        visitor = BrowserClient()
        block = text(visitor.get("/block/", headers=headers).content.decode())
        room = text(visitor.get("/thread/1/", headers=headers).content.decode())
        # From another address, so the staff member's record never takes a guest off.
        staff = BrowserClient(REMOTE_ADDR="198.51.100.9")
        staff.force_login(User.objects.create_user("boss", is_staff=True))
        admin = staff.get(PAGE, headers=headers).content.decode()
    # Past the peak prune stored: the pages show their count as the most ever, as of the
    # newest visit.
    with translation.override(language):
        at = timezone.localtime(NOW + timedelta(seconds=60))
        when = {"date": formats.date_format(at, "DATE_FORMAT"), "time": f"{at:%H:%M}"}
    site_block = expected["block"].format(pk=anonymous.pk, **when)
    assert block == f"{expected['site heading']} {site_block}"
    assert room == f"{expected['room heading']} {expected['room']}"
    summary = re.search(r'id="content-main"[^>]*>(.*?)</p>', admin, re.S)
    assert summary is not None
    assert text(summary.group(1)) == expected["admin"].format(**when)
    assert f'aria-label="{expected["chart"]}"' in admin
    page = text(admin)
    for part in ("legend", "table", "hidden", "day", "visitors"):
        assert expected[part] in page
    assert f"<title>{expected['title']} |" in admin


@pytest.mark.parametrize("language", PAGES)
def test_unavailable_in_each_language(language: str, dead_redis: None, db: None) -> None:
    english = ["Who's online is unavailable right now.", "Who is here is unavailable right now."]
    with translation.override(language):
        page = engines["django"].from_string(
            "{% load whos_online %}{% whos_online %}{% whos_here 'lobby' %}"
        )
        shown = re.findall(r'unavailable">(.*?)</p>', page.render({}))
        assert shown == [translation.gettext(line) for line in english]
    assert not set(shown) & set(english)


# The summary line with n members and n guests online (so 2n users), and the
# window line for an n-minute window (10 for n = 0): each count picks the
# language's plural form by its own rule.
PLURALS = [
    ("pl", 1, "2 osoby online: 1 członek, 1 gość", "ostatniej minuty."),
    ("pl", 2, "4 osoby online: 2 członków, 2 gości", "ostatnich 2 minut."),
    ("pl", 5, "10 osób online: 5 członków, 5 gości", "ostatnich 5 minut."),
    ("pl", 11, "22 osoby online: 11 członków, 11 gości", "ostatnich 11 minut."),
    ("pl", 22, "44 osoby online: 22 członków, 22 gości", "ostatnich 22 minut."),
    ("ru", 1, "2 пользователя онлайн: 1 участник, 1 гость", "последние 1 минуту."),
    ("ru", 2, "4 пользователя онлайн: 2 участника, 2 гостя", "последние 2 минуты."),
    ("ru", 5, "10 пользователей онлайн: 5 участников, 5 гостей", "последние 5 минут."),
    ("ru", 11, "22 пользователя онлайн: 11 участников, 11 гостей", "последние 11 минут."),
    ("ru", 21, "42 пользователя онлайн: 21 участник, 21 гость", "последние 21 минуту."),
    ("ru", 22, "44 пользователя онлайн: 22 участника, 22 гостя", "последние 22 минуты."),
    ("uk", 1, "2 користувачі онлайн: 1 учасник, 1 гість", "останні 1 хвилину."),
    ("uk", 2, "4 користувачі онлайн: 2 учасники, 2 гості", "останні 2 хвилини."),
    ("uk", 5, "10 користувачів онлайн: 5 учасників, 5 гостей", "останні 5 хвилин."),
    ("uk", 11, "22 користувачі онлайн: 11 учасників, 11 гостей", "останні 11 хвилин."),
    ("uk", 21, "42 користувачі онлайн: 21 учасник, 21 гість", "останні 21 хвилину."),
    ("uk", 22, "44 користувачі онлайн: 22 учасники, 22 гості", "останні 22 хвилини."),
    ("ar", 0, "0 مستخدم متصل: 0 عضو، 0 ضيف", "في آخر 10 دقائق."),
    ("ar", 1, "مستخدمان متصلان: عضو واحد، ضيف واحد", "في الدقيقة الأخيرة."),
    ("ar", 2, "4 مستخدمين متصلين: عضوان، ضيفان", "في آخر دقيقتين."),
    ("ar", 3, "6 مستخدمين متصلين: 3 أعضاء، 3 ضيوف", "في آخر 3 دقائق."),
    ("ar", 11, "22 مستخدمًا متصلًا: 11 عضوًا، 11 ضيفًا", "في آخر 11 دقيقة."),
    ("ar", 100, "200 مستخدم متصل: 100 عضو، 100 ضيف", "في آخر 100 دقيقة."),
    ("fr", 0, "0 utilisateur en ligne : 0 membre, 0 invité", "des 10 dernières minutes."),
    ("fr", 1, "2 utilisateurs en ligne : 1 membre, 1 invité", "de la dernière minute."),
    ("ja", 1, "オンライン2人：メンバー1人、ゲスト1人", "過去1分間に"),
    ("ja", 5, "オンライン10人：メンバー5人、ゲスト5人", "過去5分間に"),
]


@pytest.mark.parametrize(
    ("language", "n", "summary", "window"),
    PLURALS,
    ids=[f"{language}-{n}" for language, n, *_ in PLURALS],
)
def test_plural_forms(
    language: str,
    n: int,
    summary: str,
    window: str,
    redis_db: redis.Redis,
    settings: Any,
    people: Any,
) -> None:
    settings.WHOS_ONLINE_MAX_AGE = 60 * (n or 10)
    with time_machine.travel(NOW, tick=False):
        for user in people(*(f"member{i}" for i in range(n))):
            presence.record_user(user)
        for i in range(n):
            presence.record_guest(f"203.0.113.{i}")
        with translation.override(language):
            html = engines["django"].from_string("{% load whos_online %}{% whos_online %}")
            block = html.render({})
    line = re.search(r'class="whos-online-summary">(.*?)</p>', block, re.S)
    assert line is not None
    assert text(line.group(1)) == summary
    assert window in text(block)
