"""The Trends page's charts (Altair, drawn as SVG): time on x in UTC, one chart per group of figures, the picked
window shaded behind the marks, and with a grouping (per host, category or knowledge base) a panel per group."""

from __future__ import annotations

from datetime import timedelta

import altair as alt
import pandas as pd

from appui.data.trends import Window

WINDOW_COLOUR = "#f58518"
BUCKET_LENGTH = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
# per bucket: the axis labels' and the tooltip's time format (UTC: the x scale is a utc scale)
TIME_FORMAT = {"hour": ("%d %b %H:%M", "%Y-%m-%d %H:%M"), "day": ("%d %b", "%Y-%m-%d"),
               "week": ("%d %b", "week of %Y-%m-%d")}
SHARE_FORMAT, VALUE_FORMAT = ".0%", ",.4~g"


def chart(long: pd.DataFrame, kind: str, window: Window, *, by: str, groups: list[str], y_title: str,
          share: bool, height: int = 220) -> alt.Chart | alt.FacetChart:
    """One chart of `long` (appui.data.trends.long_form): bars (`kind` "bars"), stacked bars ("stacked") or lines
    ("lines") per bucket, the window shaded and its edges dashed, a row of panels per group when there is more
    than "all"; taller when its legend takes two rows."""
    height += 40 if long["figure"].nunique() > 2 else 0
    data = long.assign(bucket_end=long["bucket"] + BUCKET_LENGTH[by],
                       window_start=pd.Timestamp(window.start, tz="UTC"),
                       window_end=pd.Timestamp(window.end, tz="UTC"))
    axis_format, when = TIME_FORMAT[by]
    x = alt.X("bucket:T", title=f"{by} (UTC)", scale=alt.Scale(type="utc"),
              axis=alt.Axis(format=axis_format, labelOverlap=True))
    y_axis = alt.Axis(format="%") if share else alt.Axis(format=",~f")
    tooltip = [alt.Tooltip("bucket:T", timeUnit="utcyearmonthdatehoursminutes", title="UTC", format=when),
               alt.Tooltip("figure:N", title="figure"),
               alt.Tooltip("value:Q", title="value", format=SHARE_FORMAT if share else VALUE_FORMAT)]
    if groups != ["all"]:
        tooltip.insert(0, alt.Tooltip("group:N", title="group"))
    shade = alt.Chart().mark_rect(opacity=0.14, color=WINDOW_COLOUR).encode(
        alt.X("min(window_start):T", scale=alt.Scale(type="utc")), alt.X2("min(window_end):T"),
        tooltip=[alt.Tooltip("min(window_start):T", title="window from (UTC)", format="%Y-%m-%d %H:%M"),
                 alt.Tooltip("min(window_end):T", title="to (UTC)", format="%Y-%m-%d %H:%M")])
    colour = alt.Color("figure:N", title=None, sort=list(dict.fromkeys(long["figure"])),
                       legend=alt.Legend(orient="bottom", columns=2, labelLimit=260))
    if kind == "lines":
        marks = alt.Chart().mark_line(point=True).encode(x, alt.Y("value:Q", title=y_title, axis=y_axis),
                                                         colour, tooltip=tooltip)
    elif kind == "stacked":  # each bucket's shares stacked in the figures' order, bottom first
        marks = alt.Chart().mark_bar().encode(
            x, alt.X2("bucket_end:T"), alt.Y("upper:Q", title=y_title, axis=y_axis, scale=alt.Scale(domain=[0, 1])),
            alt.Y2("lower:Q"), colour, tooltip=tooltip)
        data = stacked(data)
    else:
        marks = alt.Chart().mark_bar().encode(x, alt.X2("bucket_end:T"), alt.Y("value:Q", title=y_title, axis=y_axis),
                                              alt.Y2(datum=0), tooltip=tooltip)
    edges = alt.Chart().mark_rule(color=WINDOW_COLOUR, strokeDash=[4, 3]).encode(  # seen over full-height bars
        alt.X("min(window_start):T", scale=alt.Scale(type="utc"))) + alt.Chart().mark_rule(
        color=WINDOW_COLOUR, strokeDash=[4, 3]).encode(alt.X("min(window_end):T", scale=alt.Scale(type="utc")))
    layered = alt.layer(shade.properties(name="window"), marks, edges, data=data)
    if groups == ["all"]:
        return layered.properties(height=height, usermeta={"embedOptions": {"renderer": "svg"}})
    return layered.properties(height=max(80, height // 2)).facet(
        row=alt.Row("group:N", title=None, sort=groups, header=alt.Header(labelAngle=0, labelAlign="left")),
    ).properties(usermeta={"embedOptions": {"renderer": "svg"}})


def stacked(data: pd.DataFrame) -> pd.DataFrame:
    """`data` with each row's `lower` and `upper` edge when the figures of a bucket (and group) are stacked in the
    order they come (a missing value stacks as 0)."""
    values = data["value"].fillna(0.0)
    upper = values.groupby([data["group"], data["bucket"]], sort=False).cumsum()
    return data.assign(lower=upper - values, upper=upper)
