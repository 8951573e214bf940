// The login link's page: keep the key the bridge handed over in this
// origin's localStorage, and go on to the page (the code is spent; no
// secret stays in the address bar or the history).
"use strict";
const key = document.querySelector('meta[name="askctl-key"]').content;
localStorage.setItem("askctl.key", key);
location.replace("/");
