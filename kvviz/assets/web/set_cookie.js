/* Keeps one value in this browser as a cookie on the app's own address: the class poll's voter token and the room a
   teacher hosts. A new tab, a reload or the browser's Back then finds the same voter and the same room, which a
   Streamlit session (one per tab) cannot remember. SameSite=Lax: sent with the app's own pages only.
   KVVIZ: {name, value, max_age_s}; max_age_s 0 deletes the cookie. */
document.cookie = KVVIZ.name + "=" + encodeURIComponent(KVVIZ.value) + "; path=/; max-age=" + KVVIZ.max_age_s +
  "; SameSite=Lax";
