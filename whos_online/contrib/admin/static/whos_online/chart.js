// The admin's chart: the counts at each moment for touch as for a mouse. Each column's
// <title> is a tooltip on hover only; a tap on a column (or the pointer moving over one)
// writes its reading into .whos-online-reading under the chart, and marks the column.
// Before that, the reading is the latest sample's.
(() => {
  "use strict";
  const chart = document.querySelector("svg.whos-online-chart");
  const reading = document.querySelector(".whos-online-reading");
  if (!chart || !reading) return;
  const columns = chart.querySelectorAll(".whos-online-hover rect");
  let marked = null;

  function show(column) {
    if (!column || column === marked) return;
    if (marked) marked.removeAttribute("class");
    column.setAttribute("class", "whos-online-reading-column");
    marked = column;
    reading.textContent = column.querySelector("title").textContent;
  }

  // The element under the pointer, not the event's target: a touch keeps its first target.
  function under(event) {
    const found = document.elementFromPoint(event.clientX, event.clientY);
    return found && found.closest(".whos-online-hover rect");
  }

  chart.addEventListener("pointerdown", (event) => show(under(event)));
  chart.addEventListener("pointermove", (event) => show(under(event)));
  show(columns[columns.length - 1]);
})();
