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
          share: bool, height: int = 200) -> alt.Chart | alt.FacetChart:
    """One chart of `long` (appui.data.trends.long_form): bars (`kind` "bars"), stacked bars ("stacked") or lines
    ("lines") per bucket, the window shaded, a row of panels per group when there is more than "all"."""
    data = long.assign(bucket_end=long["bucket"] + BUCKET_LENGTH[by],
                       window_start=pd.Timestamp(window.start, tz="UTC"),
                       window_end=pd.Timestamp(window.end, tz="UTC"))
    axis_format, when = TIME_FORMAT[by]
    x = alt.X("bucket:T", title=f"{by} (UTC)", scale=alt.Scale(type="utc"),
              axis=alt.Axis(format=axis_format, labelOverlap=True))
    y_axis = alt.Axis(format="%") if share else alt.Axis(format=",~g")
    tooltip = [alt.Tooltip("bucket:T", timeUnit="utcyearmonthdatehoursminutes", title="UTC", format=when),
               alt.Tooltip("figure:N", title="figure"),
               alt.Tooltip("value:Q", title="value", format=SHARE_FORMAT if share else VALUE_FORMAT)]
    if groups != ["all"]:
        tooltip.insert(0, alt.Tooltip("group:N", title="group"))
    shade = alt.Chart().mark_rect(opacity=0.14, color=WINDOW_COLOUR).encode(
        alt.X("min(window_start):T", scale=alt.Scale(type="utc")), alt.X2("min(window_end):T"),
        tooltip=[alt.Tooltip("min(window_start):T", title="window from (UTC)", format="%Y-%m-%d %H:%M"),
                 alt.Tooltip("min(window_end):T", title="to (UTC)", format="%Y-%m-%d %H:%M")])
    colour = alt.Color("figure:N", title=None, legend=alt.Legend(orient="bottom"),
                       sort=list(dict.fromkeys(long["figure"])))
    if kind == "lines":
        marks = alt.Chart().mark_line(point=True).encode(x, alt.Y("value:Q", title=y_title, axis=y_axis),
                                                         colour, tooltip=tooltip)
    else:
        y = alt.Y("value:Q", title=y_title, axis=y_axis, stack="zero" if kind == "stacked" else None,
                  scale=alt.Scale(domain=[0, 1]) if share else alt.Undefined)
        marks = alt.Chart().mark_bar().encode(x, alt.X2("bucket_end:T"), y, tooltip=tooltip,
                                              **({"color": colour, "order": alt.Order("name:N")}
                                                 if kind == "stacked" else {}))
    layered = alt.layer(shade.properties(name="window"), marks, data=data)
    if groups == ["all"]:
        return layered.properties(height=height, usermeta={"embedOptions": {"renderer": "svg"}})
    return layered.properties(height=max(80, height // 2)).facet(
        row=alt.Row("group:N", title=None, sort=groups, header=alt.Header(labelAngle=0, labelAlign="left")),
    ).properties(usermeta={"embedOptions": {"renderer": "svg"}})
