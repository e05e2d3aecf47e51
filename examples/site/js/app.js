// Shows the local time, to prove scripts load with the right type.
(function () {
  "use strict";
  var el = document.getElementById("clock");
  if (!el) return;
  function tick() {
    el.textContent = "Local time: " + new Date().toLocaleTimeString();
  }
  tick();
  setInterval(tick, 1000);
})();
